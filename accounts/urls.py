from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("people/", views.people, name="people"),
    path("people/invite/", views.invite, name="invite"),
    path("people/<id:user_id>/roles/", views.person_roles, name="person_roles"),
    path("people/<id:user_id>/deactivate/", views.person_deactivate, name="person_deactivate"),
    path("people/<id:user_id>/reactivate/", views.person_reactivate, name="person_reactivate"),
    path("people/<id:user_id>/invitation/", views.person_invitation_renew, name="person_invitation_renew"),
    path("invitation/<str:token>/", views.invitation_accept, name="invitation_accept"),
]
